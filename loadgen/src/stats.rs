//! What the workers record: one latency histogram and failure count per operation
//! ([`Op`]), for the interval in progress. The reporter takes each interval's numbers
//! ([`Stats::take`]) and hands them to [`crate::series`], which keeps the totals, so
//! the totals are exactly the union of the intervals (what the interval log stores).
//! One lock per operation, held for the length of a histogram update.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Latencies are recorded in microseconds, up to an hour.
pub const MAX_MICROS: u64 = 3_600_000_000;

/// What is timed. Each has its own histogram in the summary, the JSON, the CSV and the
/// interval log (where its name is the histogram's tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Create,
    Delete,
    SetData,
    GetData,
    Exists,
    /// Pub/sub's eventStat: from the publisher's intended send of the create to the
    /// watch event's arrival at the subscriber's connection. A missed event is its
    /// failure.
    Event,
    /// Pub/sub's dataStat: from the same send to the return of the subscriber's read.
    Data,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::Create,
        Op::Delete,
        Op::SetData,
        Op::GetData,
        Op::Exists,
        Op::Event,
        Op::Data,
    ];

    /// ZooKeeper's names for the operations, and the reference test's for the two
    /// pub/sub distributions.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Delete => "delete",
            Op::SetData => "setData",
            Op::GetData => "getData",
            Op::Exists => "exists",
            Op::Event => "eventStat",
            Op::Data => "dataStat",
        }
    }

    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An empty histogram that grows to fit (up to [`MAX_MICROS`]): small while an
/// interval is quiet, and addable to any other.
pub fn histogram() -> Histogram<u64> {
    let mut h = Histogram::new(3).expect("3 significant figures is valid");
    h.auto(true);
    h
}

/// Microseconds, clamped to what the histograms hold.
pub fn micros(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_micros())
        .unwrap_or(MAX_MICROS)
        .clamp(1, MAX_MICROS)
}

/// One operation's interval in progress.
struct Tally {
    interval: Histogram<u64>,
    failures: u64,
    /// Set when the measured part of the run ends: requests that complete later (the
    /// ones in hand when the workers are told to stop) are outside it, and counting
    /// them would make the summary disagree with the last live row.
    closed: bool,
}

struct Latency {
    inner: Mutex<Tally>,
    /// Completions and failures since the last reset, for `--requests`.
    done: AtomicU64,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            inner: Mutex::new(Tally {
                interval: histogram(),
                failures: 0,
                closed: false,
            }),
            done: AtomicU64::new(0),
        }
    }
}

/// One interval's recordings of every operation, as taken from [`Stats`] or read
/// back from an interval log.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Seconds from the start of measuring to the start of this interval.
    pub start: f64,
    /// Seconds the interval lasted.
    pub length: f64,
    pub hists: [Histogram<u64>; 7],
    pub failures: [u64; 7],
}

impl Interval {
    pub fn empty(start: f64, length: f64) -> Interval {
        Interval {
            start,
            length,
            hists: std::array::from_fn(|_| histogram()),
            failures: [0; 7],
        }
    }

    pub fn hist(&self, op: Op) -> &Histogram<u64> {
        &self.hists[op.index()]
    }

    pub fn hist_mut(&mut self, op: Op) -> &mut Histogram<u64> {
        &mut self.hists[op.index()]
    }

    pub fn failures(&self, op: Op) -> u64 {
        self.failures[op.index()]
    }

    pub fn failures_mut(&mut self, op: Op) -> &mut u64 {
        &mut self.failures[op.index()]
    }

    /// Adds another process's same interval (merge): counts add, histograms add.
    pub fn absorb(&mut self, other: &Interval) {
        self.length = self.length.max(other.length);
        for op in Op::ALL {
            add(self.hist_mut(op), other.hist(op));
            *self.failures_mut(op) += other.failures(op);
        }
    }
}

/// `into += from`; the histograms resize, so this cannot fail for ours.
pub fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    if let Err(e) = into.add(from) {
        tracing::warn!("histogram addition failed: {e:?}");
    }
}

/// Everything the workers record.
#[derive(Default)]
pub struct Stats {
    ops: [Latency; 7],
}

impl Stats {
    pub fn record(&self, op: Op, elapsed: Duration) {
        let latency = &self.ops[op.index()];
        let mut tally = latency.inner.lock();
        if tally.closed {
            return;
        }
        // `record` grows the histogram; `saturating_record` would clamp to its size.
        if let Err(e) = tally.interval.record(micros(elapsed)) {
            tracing::warn!("cannot record a latency: {e:?}");
        }
        latency.done.fetch_add(1, Ordering::Relaxed);
    }

    pub fn fail(&self, op: Op) {
        let latency = &self.ops[op.index()];
        let mut tally = latency.inner.lock();
        if tally.closed {
            return;
        }
        tally.failures += 1;
        latency.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the interval's numbers and starts a new interval.
    pub fn take(&self, start: f64, length: f64) -> Interval {
        let mut interval = Interval::empty(start, length);
        for op in Op::ALL {
            let mut tally = self.ops[op.index()].inner.lock();
            std::mem::swap(interval.hist_mut(op), &mut tally.interval);
            *interval.failures_mut(op) = std::mem::take(&mut tally.failures);
        }
        interval
    }

    /// Completions and failures of `ops` since the last reset.
    pub fn done(&self, ops: &[Op]) -> u64 {
        ops.iter()
            .map(|op| self.ops[op.index()].done.load(Ordering::Relaxed))
            .sum()
    }

    /// Ends the measured part: later results are not counted.
    pub fn close(&self) {
        for latency in &self.ops {
            latency.inner.lock().closed = true;
        }
    }

    /// Forgets everything (the end of the warmup).
    pub fn reset(&self) {
        for latency in &self.ops {
            let mut tally = latency.inner.lock();
            tally.interval.reset();
            tally.failures = 0;
            latency.done.store(0, Ordering::Relaxed);
        }
    }
}

/// A distribution's summary, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub failures: u64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>, failures: u64) -> Percentiles {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            failures,
            mean: h.mean() / 1000.0,
            p50: ms(0.50),
            p95: ms(0.95),
            p99: ms(0.99),
            p999: ms(0.999),
            max: h.max() as f64 / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_taken_and_restarted() {
        let stats = Stats::default();
        stats.record(Op::Create, Duration::from_millis(2));
        stats.record(Op::Create, Duration::from_millis(4));
        stats.record(Op::Delete, Duration::from_millis(1));
        stats.fail(Op::Create);
        let taken = stats.take(0.0, 1.0);
        assert_eq!(taken.hist(Op::Create).len(), 2);
        assert_eq!(taken.hist(Op::Delete).len(), 1);
        assert_eq!(taken.failures(Op::Create), 1);
        let p = Percentiles::of(taken.hist(Op::Create), 1);
        assert!((p.mean - 3.0).abs() < 0.01);
        assert!((p.max - 4.0).abs() < 0.01);
        assert_eq!(stats.done(&[Op::Create]), 3);
        assert_eq!(stats.done(&[Op::Create, Op::Delete]), 4);
        let next = stats.take(1.0, 1.0);
        assert_eq!(next.hist(Op::Create).len(), 0);
        assert_eq!(next.failures(Op::Create), 0);
    }

    #[test]
    fn nothing_counts_once_closed() {
        let stats = Stats::default();
        stats.close();
        stats.record(Op::SetData, Duration::from_millis(2));
        stats.fail(Op::SetData);
        assert_eq!(stats.done(&[Op::SetData]), 0);
        assert_eq!(stats.take(0.0, 1.0).hist(Op::SetData).len(), 0);
    }

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
        }
        assert_eq!(Op::from_name("sync"), None);
    }
}

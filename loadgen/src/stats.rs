//! What the workers record: per-request latency (and, for pub/sub, event and data
//! latency) into histograms, and request and failure counts. One lock per metric,
//! held for the length of a histogram update.

use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Latencies are recorded in microseconds, up to an hour.
const MAX_MICROS: u64 = 3_600_000_000;

/// A latency distribution over an interval and over the whole run.
pub struct Latency {
    inner: Mutex<Tally>,
}

struct Tally {
    interval: Histogram<u64>,
    total: Histogram<u64>,
    interval_failures: u64,
    total_failures: u64,
    /// Set when the measured part of the run ends: requests that complete later (the
    /// ones in hand when the workers are told to stop) are outside it, and counting
    /// them would make the summary disagree with the last live row.
    closed: bool,
}

/// One interval's numbers, taken (and reset) by the reporter.
#[derive(Debug, Clone, Default)]
pub struct IntervalTake {
    pub count: u64,
    pub mean_ms: f64,
    pub failures: u64,
}

fn histogram() -> Histogram<u64> {
    // Three significant figures over 1 µs .. 1 h: a few hundred KiB per histogram.
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("static histogram bounds are valid")
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            inner: Mutex::new(Tally {
                interval: histogram(),
                total: histogram(),
                interval_failures: 0,
                total_failures: 0,
                closed: false,
            }),
        }
    }
}

impl Latency {
    pub fn record(&self, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros())
            .unwrap_or(MAX_MICROS)
            .clamp(1, MAX_MICROS);
        let mut tally = self.inner.lock();
        if tally.closed {
            return;
        }
        tally.interval.saturating_record(micros);
        tally.total.saturating_record(micros);
    }

    pub fn fail(&self) {
        let mut tally = self.inner.lock();
        if tally.closed {
            return;
        }
        tally.interval_failures += 1;
        tally.total_failures += 1;
    }

    /// Takes the interval's numbers and starts a new interval.
    pub fn take_interval(&self) -> IntervalTake {
        let mut tally = self.inner.lock();
        let take = IntervalTake {
            count: tally.interval.len(),
            mean_ms: tally.interval.mean() / 1000.0,
            failures: tally.interval_failures,
        };
        tally.interval.reset();
        tally.interval_failures = 0;
        take
    }

    /// Ends the measured part: later results are not counted.
    pub fn close(&self) {
        self.inner.lock().closed = true;
    }

    /// Forgets everything (the end of the warmup).
    pub fn reset(&self) {
        let mut tally = self.inner.lock();
        tally.interval.reset();
        tally.total.reset();
        tally.interval_failures = 0;
        tally.total_failures = 0;
    }

    pub fn total_count(&self) -> u64 {
        self.inner.lock().total.len()
    }

    pub fn total_failures(&self) -> u64 {
        self.inner.lock().total_failures
    }

    pub fn summary(&self) -> Percentiles {
        let tally = self.inner.lock();
        let ms = |q: f64| tally.total.value_at_quantile(q) as f64 / 1000.0;
        Percentiles {
            count: tally.total.len(),
            failures: tally.total_failures,
            mean: tally.total.mean() / 1000.0,
            p50: ms(0.50),
            p95: ms(0.95),
            p99: ms(0.99),
            p999: ms(0.999),
            max: tally.total.max() as f64 / 1000.0,
        }
    }
}

/// A distribution's summary, in milliseconds.
#[derive(Debug, Clone, Default, serde::Serialize)]
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

/// Everything a run records.
#[derive(Default)]
pub struct Stats {
    /// Every request's response time.
    pub requests: Latency,
    /// Pub/sub: from just before the create to the watch event's arrival.
    pub events: Latency,
    /// Pub/sub with --get-after-notify: from just before the create to the data read.
    pub data: Latency,
    /// Pub/sub: armed watches whose event did not arrive in time (or was not the
    /// creation); each is a failure.
    pub events_missed: std::sync::atomic::AtomicU64,
}

impl Stats {
    pub fn reset(&self) {
        self.requests.reset();
        self.events.reset();
        self.data.reset();
        self.events_missed
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_and_totals() {
        let latency = Latency::default();
        latency.record(Duration::from_millis(2));
        latency.record(Duration::from_millis(4));
        latency.fail();
        let take = latency.take_interval();
        assert_eq!(take.count, 2);
        assert!((take.mean_ms - 3.0).abs() < 0.01);
        assert_eq!(take.failures, 1);
        assert_eq!(latency.take_interval().count, 0);
        let summary = latency.summary();
        assert_eq!(summary.count, 2);
        assert_eq!(summary.failures, 1);
        assert!((summary.max - 4.0).abs() < 0.01);
    }
}
